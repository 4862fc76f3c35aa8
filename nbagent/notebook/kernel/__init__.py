"""The kernel plumbing: the kernel's one session, its threads, its file, and how the kernel is run.

:mod:`~nbagent.notebook.kernel.kernel_session` opens and resumes the kernel's agent on the agent loop
(:mod:`~nbagent.notebook.kernel.agent_loop`), hands work to the main thread
(:mod:`~nbagent.notebook.kernel.main_thread`, :mod:`~nbagent.notebook.kernel.shell_pump`), finds the
session file (:mod:`~nbagent.notebook.kernel.session_file`) and the runner
(:mod:`~nbagent.notebook.kernel.runs`, :mod:`~nbagent.notebook.kernel.headless`). Importing this
package imports none of them.
"""
