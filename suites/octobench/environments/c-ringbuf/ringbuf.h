#ifndef RINGBUF_H
#define RINGBUF_H

#include <stddef.h>

/* A fixed-capacity ring buffer of ints over caller-provided storage. */
typedef struct {
    int *data;
    size_t capacity;
    size_t head; /* index of the oldest element */
    size_t count;
} ringbuf;

/* Initialise rb over storage[0..capacity). */
void rb_init(ringbuf *rb, int *storage, size_t capacity);

/* Append value; returns 0, or -1 when the buffer is full. */
int rb_push(ringbuf *rb, int value);

/* Remove the oldest value into *out; returns 0, or -1 when empty. */
int rb_pop(ringbuf *rb, int *out);

/* Number of stored values. */
size_t rb_count(const ringbuf *rb);

#endif
