"""Approvals in the window: one presenter owns the pending approvals and answers them; the
approval dialog and the Approvals dock are two views of it."""
