"""The kernel's built-in tools (SPEC §9.4, §9.7) and the approval desk that guards them.

:mod:`~nbagent.notebook.tools.kernel_tools` puts the tools together; the other modules are what they
read (the namespace, the cell history, the notebook) and do (run code, propose a cell), and who
decides whether they may (:mod:`~nbagent.notebook.tools.approvals`,
:mod:`~nbagent.notebook.tools.approval_prompts`). Importing this package imports none of them.
"""
