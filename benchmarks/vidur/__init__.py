"""jaxsched against Vidur (microsoft/vidur): set-up, predictor, harness and comparison (README.md)."""
