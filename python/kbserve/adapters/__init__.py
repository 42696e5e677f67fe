"""Adapters of kbserve to RL engines, one small module each; each needs its
engine installed (docs/kbserve-python.md):

- ``kbserve.adapters.verl``: a veRL ``BaseTool`` over a kbserve session
  (multi-turn, veRL's ToolAgentLoop) and a ``compute_score`` reward function.
- ``kbserve.adapters.openrlhf``: an OpenRLHF agent (``--agent_func_path``);
  the single-turn remote reward is the server's /v1/reward/openrlhf itself.
- ``kbserve.adapters.openenv``: an OpenEnv ``EnvClient`` over kbserve sessions (the server's /ws).
"""
