"""The score screen: how likely a pasted or opened text is to the model, token by token."""
