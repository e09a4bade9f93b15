"""Saved chats: schema, store, records, writer, recorder, replay."""
