/* Integer columns of an SQLite table read straight from the file's table b-tree pages.
 *
 * SQLite hands a value over through its virtual machine, one row and one column at a time; for the
 * millions of rows of an export's event tables that is most of an analysis's time. These two functions
 * walk the b-tree themselves (the file format: https://www.sqlite.org/fileformat2.html) and write the
 * requested columns into arrays the caller owns:
 *
 *   leaves(buffer, page_size, usable, root) -> (pages, counts)   the table's leaf pages in rowid order and
 *                                                                 their cell counts, as int64 bytes
 *   decode(buffer, page_size, usable, pages, alias, columns) -> rows
 *       pages: int64 buffer of leaf page numbers; columns: ((index, values int64 buffer, nulls uint8
 *       buffer or None), ...) with indexes ascending; alias: the INTEGER PRIMARY KEY column (its value is
 *       the rowid) or -1. Without a nulls buffer (a NOT NULL column), a NULL is an error.
 *
 * Anything this reader does not handle (an overflowing row, a value that is not an integer, a record
 * shorter than the column asked for, a page that is not what the tree says) raises ValueError, and the
 * caller reads the table through SQLite instead. Every access is bounds-checked: a damaged file gives an
 * error or wrong numbers, never a read outside the buffer. decode releases the GIL.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LEAF_TABLE 0x0D
#define INTERIOR_TABLE 0x05
#define MAX_DEPTH 64

typedef struct {
    const uint8_t *data;
    int64_t size;
    int64_t page_size;
    int64_t usable;
    int64_t pages;
} File;

static unsigned be16(const uint8_t *p) { return ((unsigned)p[0] << 8) | p[1]; }

static uint32_t be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}

/* An SQLite varint (1-9 bytes, big-endian, 7 bits a byte, the 9th byte all 8) at p, not reading at or past
 * end. Returns its length, or 0 when it runs past end. */
static inline int varint(const uint8_t *p, const uint8_t *end, uint64_t *out) {
    uint64_t v = 0;
    int i;
    if (p < end && p[0] < 0x80) { /* serial types of integers, and small sizes: one byte */
        *out = p[0];
        return 1;
    }
    for (i = 0; i < 8; i++) {
        if (p + i >= end) return 0;
        v = (v << 7) | (p[i] & 0x7F);
        if (!(p[i] & 0x80)) { *out = v; return i + 1; }
    }
    if (p + 8 >= end) return 0;
    *out = (v << 8) | p[8];
    return 9;
}

/* Offset of page number `page`'s b-tree header (page 1 starts with the 100-byte file header), or -1. */
static int64_t page_header(const File *f, int64_t page) {
    if (page < 1 || page > f->pages) return -1;
    return (page - 1) * f->page_size + (page == 1 ? 100 : 0);
}

static int64_t page_start(const File *f, int64_t page) { return (page - 1) * f->page_size; }

typedef struct {
    int64_t *pages;
    int64_t *counts;
    int64_t n, cap, visited;
} Leaves;

static const char *push_leaf(Leaves *out, int64_t page, int64_t count) {
    if (out->n == out->cap) {
        int64_t cap = out->cap ? out->cap * 2 : 1024;
        int64_t *pages = realloc(out->pages, (size_t)cap * sizeof(int64_t));
        if (!pages) return "out of memory";
        out->pages = pages;
        int64_t *counts = realloc(out->counts, (size_t)cap * sizeof(int64_t));
        if (!counts) return "out of memory";
        out->counts = counts;
        out->cap = cap;
    }
    out->pages[out->n] = page;
    out->counts[out->n] = count;
    out->n++;
    return NULL;
}

static const char *walk(const File *f, int64_t page, int depth, Leaves *out) {
    if (depth > MAX_DEPTH) return "the b-tree is deeper than any real one";
    if (++out->visited > f->pages) return "the b-tree visits more pages than the file has";
    int64_t header = page_header(f, page);
    if (header < 0) return "a page number outside the file";
    const uint8_t *base = f->data + page_start(f, page);
    const uint8_t *end = base + f->usable;
    const uint8_t *h = f->data + header;
    if (h + 12 > end) return "a page header past the page";
    unsigned cells = be16(h + 3);
    if (h[0] == LEAF_TABLE) {
        if (h + 8 + 2 * (int64_t)cells > end) return "a cell pointer array past the page";
        return push_leaf(out, page, cells);
    }
    if (h[0] != INTERIOR_TABLE) return "a page that is not a table b-tree page";
    if (h + 12 + 2 * (int64_t)cells > end) return "a cell pointer array past the page";
    for (unsigned i = 0; i < cells; i++) {
        unsigned at = be16(h + 12 + 2 * i);
        if (base + at + 4 > end) return "a cell past the page";
        const char *err = walk(f, be32(base + at), depth + 1, out);
        if (err) return err;
    }
    return walk(f, be32(h + 8), depth + 1, out);
}

/* The file's geometry from the caller's page size and usable size (page size less reserved bytes). */
static int init_file(File *f, const Py_buffer *view, long long page_size, long long usable) {
    if (page_size < 512 || page_size > 65536 || usable < 480 || usable > page_size) {
        PyErr_SetString(PyExc_ValueError, "page size or usable size out of range");
        return 0;
    }
    f->data = view->buf;
    f->size = view->len;
    f->page_size = page_size;
    f->usable = usable;
    f->pages = view->len / page_size;
    return 1;
}

static PyObject *leaves(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view;
    File f;
    long long page_size, usable, root;
    if (!PyArg_ParseTuple(args, "y*LLL", &view, &page_size, &usable, &root)) return NULL;
    if (!init_file(&f, &view, page_size, usable)) {
        PyBuffer_Release(&view);
        return NULL;
    }
    Leaves out = {NULL, NULL, 0, 0, 0};
    const char *err = walk(&f, root, 0, &out);
    PyBuffer_Release(&view);
    PyObject *result = NULL;
    if (err) {
        PyErr_SetString(PyExc_ValueError, err);
    } else {
        result = Py_BuildValue("(y#y#)", (const char *)out.pages, (Py_ssize_t)(out.n * sizeof(int64_t)),
                               (const char *)out.counts, (Py_ssize_t)(out.n * sizeof(int64_t)));
    }
    free(out.pages);
    free(out.counts);
    return result;
}

typedef struct {
    long index;
    int64_t *values;
    uint8_t *nulls;
    int64_t capacity;
} Column;

static int64_t big_endian_int(const uint8_t *p, int size) {
    uint64_t v = (p[0] & 0x80) ? ~(uint64_t)0 : 0; /* sign-extend from the first byte */
    for (int i = 0; i < size; i++) v = (v << 8) | p[i];
    return (int64_t)v;
}

static const int INT_SIZE[10] = {0, 1, 2, 3, 4, 6, 8, 8, 0, 0};

/* Decode every cell of the leaf pages into the columns; returns the rows written or sets *err. */
static int64_t decode_pages(const File *f, const int64_t *pages, int64_t n_pages, long alias, Column *columns,
                            int n_columns, const char **err) {
    int64_t row = 0;
    for (int64_t p = 0; p < n_pages; p++) {
        int64_t header = page_header(f, pages[p]);
        if (header < 0) { *err = "a page number outside the file"; return -1; }
        const uint8_t *base = f->data + page_start(f, pages[p]);
        const uint8_t *end = base + f->usable;
        const uint8_t *h = f->data + header;
        if (h + 8 > end || h[0] != LEAF_TABLE) { *err = "a page that is not a table leaf"; return -1; }
        unsigned cells = be16(h + 3);
        if (h + 8 + 2 * (int64_t)cells > end) { *err = "a cell pointer array past the page"; return -1; }
        for (unsigned i = 0; i < cells; i++, row++) {
            const uint8_t *cell = base + be16(h + 8 + 2 * i);
            uint64_t payload, rowid, header_size;
            int n;
            if (cell >= end || !(n = varint(cell, end, &payload))) { *err = "a cell past the page"; return -1; }
            cell += n;
            if (!(n = varint(cell, end, &rowid))) { *err = "a cell past the page"; return -1; }
            const uint8_t *record = cell + n;
            if (payload > (uint64_t)(f->usable - 35)) { *err = "a row that overflows its page"; return -1; }
            const uint8_t *record_end = record + payload;
            if (record_end > end) { *err = "a row past the page"; return -1; }
            if (!(n = varint(record, record_end, &header_size)) || header_size < (uint64_t)n ||
                header_size > payload) { *err = "a record header past the row"; return -1; }
            const uint8_t *types = record + n, *types_end = record + header_size, *body = types_end;
            long index = 0;
            for (int c = 0; c < n_columns; c++) {
                Column *col = &columns[c];
                if (row >= col->capacity) { *err = "more rows than the tree's cell counts"; return -1; }
                uint64_t type = 0;
                for (;;) { /* walk the serial types up to this column's */
                    if (types >= types_end) { *err = "a record without the column"; return -1; }
                    if (!(n = varint(types, types_end, &type))) { *err = "a record header past the row"; return -1; }
                    types += n;
                    if (index == col->index) break;
                    uint64_t skip = type >= 12 ? (type - 12) / 2 : type < 10 ? (uint64_t)INT_SIZE[type] : 0;
                    if (skip > (uint64_t)(record_end - body)) { *err = "a value past the row"; return -1; }
                    body += skip;
                    index++;
                }
                index++;
                if (type == 0) {
                    if (col->index != alias && !col->nulls) { *err = "NULL in a NOT NULL column"; return -1; }
                    if (col->nulls) col->nulls[row] = col->index != alias;
                    col->values[row] = col->index == alias ? (int64_t)rowid : 0;
                    continue;
                }
                if (type == 7 || type >= 10) { *err = "a value that is not an integer"; return -1; }
                int size = INT_SIZE[type];
                if (size > record_end - body) { *err = "a value past the row"; return -1; }
                if (col->nulls) col->nulls[row] = 0;
                col->values[row] = type >= 8 ? (int64_t)type - 8 : big_endian_int(body, size);
                body += size;
            }
        }
    }
    return row;
}

static PyObject *decode(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer view, pages_view;
    File f;
    long long page_size, usable;
    long alias;
    PyObject *spec;
    if (!PyArg_ParseTuple(args, "y*LLy*lO", &view, &page_size, &usable, &pages_view, &alias, &spec)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t n_columns = PySequence_Check(spec) ? PySequence_Size(spec) : -1;
    Column *columns = n_columns > 0 ? calloc((size_t)n_columns, sizeof(Column)) : NULL;
    Py_buffer *buffers = n_columns > 0 ? calloc((size_t)n_columns * 2, sizeof(Py_buffer)) : NULL;
    Py_ssize_t held = 0;  /* columns whose buffers are held (a column without nulls holds one) */
    if (!init_file(&f, &view, page_size, usable)) goto done;
    if (!columns || !buffers) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "columns: a non-empty sequence");
        goto done;
    }
    for (Py_ssize_t c = 0; c < n_columns; c++) {
        PyObject *item = PySequence_GetItem(spec, c), *nulls = NULL;
        if (!item) goto done;
        int ok = PyArg_ParseTuple(item, "lw*O", &columns[c].index, &buffers[2 * c], &nulls);
        if (ok && nulls != Py_None && PyObject_GetBuffer(nulls, &buffers[2 * c + 1], PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&buffers[2 * c]);
            ok = 0;
        }
        Py_DECREF(item);
        if (!ok) goto done;
        held = c + 1;
        columns[c].values = buffers[2 * c].buf;
        columns[c].capacity = buffers[2 * c].len / (Py_ssize_t)sizeof(int64_t);
        if (buffers[2 * c + 1].obj) {
            columns[c].nulls = buffers[2 * c + 1].buf;
            if (buffers[2 * c + 1].len < columns[c].capacity) columns[c].capacity = buffers[2 * c + 1].len;
        }
        if (columns[c].index < 0 || (c > 0 && columns[c].index <= columns[c - 1].index)) {
            PyErr_SetString(PyExc_ValueError, "columns: indexes must ascend from 0");
            goto done;
        }
    }
    const char *err = NULL;
    int64_t rows;
    Py_BEGIN_ALLOW_THREADS
    rows = decode_pages(&f, pages_view.buf, pages_view.len / (Py_ssize_t)sizeof(int64_t), alias, columns,
                        (int)n_columns, &err);
    Py_END_ALLOW_THREADS
    if (err) PyErr_SetString(PyExc_ValueError, err);
    else result = PyLong_FromLongLong(rows);
done:
    for (Py_ssize_t c = 0; c < held; c++) {
        PyBuffer_Release(&buffers[2 * c]);
        if (buffers[2 * c + 1].obj) PyBuffer_Release(&buffers[2 * c + 1]);
    }
    free(columns);
    free(buffers);
    PyBuffer_Release(&pages_view);
    PyBuffer_Release(&view);
    return result;
}

static PyMethodDef METHODS[] = {
    {"leaves", leaves, METH_VARARGS, "The table's leaf pages in rowid order and their cell counts (int64 bytes)."},
    {"decode", decode, METH_VARARGS, "Decode the leaf pages' integer columns into the given buffers."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef MODULE = {PyModuleDef_HEAD_INIT, "_btree", NULL, -1, METHODS, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__btree(void) { return PyModule_Create(&MODULE); }
