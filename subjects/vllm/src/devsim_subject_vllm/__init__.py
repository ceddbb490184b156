"""devsim subject for vLLM 0.33.0: its platform detection and mixed-precision linear-kernel selection."""
