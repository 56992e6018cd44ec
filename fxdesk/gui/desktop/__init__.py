"""fxdesk on the desktop outside its window: the tray icon, what is worth a notification, and
the chain of ways to show one."""
