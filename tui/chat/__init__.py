"""The chat: its screen and keys, the transcript, the replies' state and jobs, what-if,
the plots, and what explore and a loop's ways out do to the conversation."""
