"""Settings: the Settings window (profiles, general, rules, data), the profile form and dialog,
the rule editor, and the first-run setup."""
