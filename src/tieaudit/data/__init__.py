"""Datasets: download, verify, parse into the interim form, and format-faithful generators."""
