"""Model calls: provider keys kept out of t1/t2, where each provider's calls go, cost, the record/replay proxy
(the run's own policy over them is ``evalrun.run.model_calls``)."""
