"""numgrad's benchmark suite: ``python -m numgrad bench`` or ``python -m bench.runner``."""
