"""Figures: tables in, matplotlib Figures out; never computes statistics, never calls plt.show()."""
