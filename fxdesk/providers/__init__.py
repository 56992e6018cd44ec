"""Model providers behind one streaming interface."""
