"""What a student's submission of one assignment can come to, and where its record is kept.

A torch-free module of its own: ``course grades`` and ``course feedback`` read records without
importing the grader (which imports torch).
"""
GRADED, REVIEW, FAILED, NOT_SUBMITTED = "graded", "needs manual review", "failed to grade", "not submitted"
RECORD = "grading.json"  # autograded/<student>/<assignment>/grading.json: the grader's verdict per check
