"""tieaudit: tie-aware, row-order-invariant top-k evaluation for recommender scores."""

__version__ = "0.1.0"
