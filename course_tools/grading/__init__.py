"""Grading, on the trusted side: the batch, the sandbox launcher, comparison, static checks, records,
feedback.

What runs inside the student's sandbox is in :mod:`.sandboxed`, which imports nothing from here.
"""
