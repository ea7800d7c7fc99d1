"""robots.txt under RFC 9309: the rules of one host, pure code on Protego."""
