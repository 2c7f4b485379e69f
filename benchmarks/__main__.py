"""``python -m benchmarks``: the benchmark harness (see benchmarks/runner.py and benchmarks/README.md)."""
# not when a process started by multiprocessing imports this file as its main module
if __name__ == "__main__":
    from benchmarks.runner import main

    raise SystemExit(main())
