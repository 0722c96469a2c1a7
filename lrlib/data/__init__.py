"""Layer 2, recorded data: reading AgentLab/BrowserGym folders safely, actions, evidence
lines, the dataset file and its splits. Imports only the core."""
