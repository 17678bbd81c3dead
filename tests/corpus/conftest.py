"""tests/corpus/programs holds programs and the modules they import, run by test_corpus.py,
not tests of ours (its test_utils.py is paragami's)."""
collect_ignore = ["programs"]
