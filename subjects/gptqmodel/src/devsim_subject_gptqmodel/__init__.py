"""devsim subject for GPTQModel."""
