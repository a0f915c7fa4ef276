"""A research run: the orchestrator (:mod:`.orchestrator`) and the phases it is made of."""
