"""asyncio services: sessions, turns, recovery, approvals, the event bus. No Qt."""
