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
static inline int chat_colors(void) { return COLORS; }
static inline int chat_color_pairs(void) { return COLOR_PAIRS; }
/// Draws one cell: up to CCHARW_MAX wide characters (a base and what combines with it).
static inline int chat_put_cell(int y, int x, const wchar_t *text, int attrs, int pair) {
    cchar_t cell;
    if (setcchar(&cell, text, (attr_t)attrs, 0, &pair) != OK) return ERR;
    return mvwadd_wch(stdscr, y, x, &cell);
}
static inline int chat_ccharw_max(void) { return CCHARW_MAX; }
/// Where curses believes the terminal's cursor is (after a refresh).
static inline int chat_cursor_y(void) { return getcury(curscr); }
static inline int chat_cursor_x(void) { return getcurx(curscr); }
static inline int chat_key_code_yes(void) { return KEY_CODE_YES; }

#endif
