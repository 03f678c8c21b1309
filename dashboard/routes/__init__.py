"""Routers of the dashboard: REST under /api, the WebSocket stream under /ws."""
