"""The transcript of the selected session: a paged list model of frozen rows, the view and
delegate that paint them, and Markdown rendering."""
