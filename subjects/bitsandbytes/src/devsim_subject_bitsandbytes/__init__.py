"""devsim subject for bitsandbytes: its native-library and per-device dispatch on simulated hosts."""
