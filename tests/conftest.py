"""Shared helpers for affidavit's Python tests."""
