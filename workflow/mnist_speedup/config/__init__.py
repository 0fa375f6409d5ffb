"""The configuration: read, checked where it enters, documented, and the run plan."""
