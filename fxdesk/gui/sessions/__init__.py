"""Sessions in the window: the tree (model and delegate), the selected session's panel and
composer, the controller that turns what the person does into engine calls, and the New session
dialog."""
