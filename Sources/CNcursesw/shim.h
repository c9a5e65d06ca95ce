#ifndef CNCURSESW_SHIM_H
#define CNCURSESW_SHIM_H
// The wide-character API of ncurses is only declared with these two defined;
// pkg-config brings the link flags but not these.
#define _XOPEN_SOURCE_EXTENDED 1
#define NCURSES_WIDECHAR 1
#include <locale.h>
#include <wchar.h>
#include <ncurses.h>

int wcwidth(wchar_t c);

// Swift 6 rejects ncurses' mutable globals and cannot import its macros;
// these small functions give the curses layer what it needs without hiding races.
static inline WINDOW *chat_stdscr(void) { return stdscr; }
static inline int chat_lines(void) { return LINES; }
static inline int chat_cols(void) { return COLS; }
static inline void chat_set_escdelay(int ms) { ESCDELAY = ms; }
static inline int chat_attr_bold(void) { return A_BOLD; }
static inline int chat_attr_dim(void) { return A_DIM; }
static inline int chat_attr_reverse(void) { return A_REVERSE; }
static inline int chat_attr_underline(void) { return A_UNDERLINE; }
static inline int chat_attr_italic(void) { return A_ITALIC; }

#endif
