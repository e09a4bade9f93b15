"""The sampling panel (f2): a control per setting, the chain's order, phrase bans, the
loop guard and beams."""
