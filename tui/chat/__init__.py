"""The chat: its screen and keys, the transcript, the replies' state and jobs, the
selection and its per-token panels (panels.py), what-if, and what explore and a loop's
ways out do to the conversation."""
