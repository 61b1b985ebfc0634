"""Helper scripts for the repository (not part of the installed package): the browser in a network
namespace (browser.py), the README picture of ``judge view``, manual example sets, selection timing."""
