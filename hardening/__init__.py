"""What the lessons lean on that a lesson need not read: archives, spools, process pools."""
