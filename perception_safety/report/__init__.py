"""Plots (matplotlib) and the HTML/JSON report."""
