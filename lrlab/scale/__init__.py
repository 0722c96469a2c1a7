"""Importers beyond AgentLab's: WebLINX-BG (`lrlib import-weblinx`)."""
