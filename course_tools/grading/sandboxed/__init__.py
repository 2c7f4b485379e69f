"""What runs inside a student's sandbox: the runner, the warm zygote, probe replay, plain results and the
protocol with the grader. Imports only the standard library, torch and course_lib: nothing of the
trusted grader.
"""
