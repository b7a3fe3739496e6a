"""Tests of the dp engine (jaxsched.dp) and its drivers."""
