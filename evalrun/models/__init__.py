"""Model calls: provider keys kept out of t1/t2, the run's model policy, and the record/replay proxy."""
