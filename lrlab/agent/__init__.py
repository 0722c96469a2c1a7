"""The agent in the loop: policies, an observation preprocessor, live episodes, failure sets.

Part of the research wing (lrlib never imports it). Importing it does no work; BrowserGym, MiniWoB++ and
AgentLab are imported only by the functions that drive a browser (``pip install -e
'.[live]'``).

- :mod:`lrlab.agent.policy` - "what would the agent do next": goal, history and tree text in,
  a BrowserGym action and the lines it relied on out (a model behind any OpenAI-compatible
  endpoint, or the scripted policy of :mod:`lrlab.agent.scripted`).
- :mod:`lrlab.agent.preprocess` - a reducer as a BrowserGym/AgentLab observation preprocessor.
- :mod:`lrlab.agent.miniwob`, :mod:`lrlab.agent.live`, :mod:`lrlab.agent.live_command` -
  MiniWoB++ episodes offline in Debian's chromium with a reducer in the loop (``lrlib live``),
  recorded in AgentLab's on-disk layout.
"""
