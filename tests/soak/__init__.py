"""The fleet soak (issue 8): agent processes under kills and pauses; see fleet.py and run.py."""
