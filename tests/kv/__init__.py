"""Tests of the kv engine (jaxsched.kv), its experiments, tuning and the WAIT paper's fluid models."""
