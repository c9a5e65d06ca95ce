// SQLite for chat-tui. SQLITE_TRANSIENT is a cast macro Swift cannot import: wrapped here.
#ifndef CHAT_TUI_SQLITE_SHIM_H
#define CHAT_TUI_SQLITE_SHIM_H
#include <sqlite3.h>

static inline sqlite3_destructor_type chat_sqlite_transient(void) { return SQLITE_TRANSIENT; }

#endif
