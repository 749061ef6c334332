"""One module per rewrite; `api.py` runs them in order (see `pipeline.py`)."""
