"""PyTorch behind the framework seam: see framework.yaml and backend.py."""
