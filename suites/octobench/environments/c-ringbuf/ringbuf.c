#include "ringbuf.h"

void rb_init(ringbuf *rb, int *storage, size_t capacity)
{
    rb->data = storage;
    rb->capacity = capacity;
    rb->head = 0;
    rb->count = 0;
}

int rb_push(ringbuf *rb, int value)
{
    if (rb->count == rb->capacity) {
        return -1;
    }
    rb->data[rb->head + rb->count] = value;
    rb->count++;
    return 0;
}

int rb_pop(ringbuf *rb, int *out)
{
    if (rb->count == 0) {
        return -1;
    }
    *out = rb->data[rb->head];
    rb->head = (rb->head + 1) % rb->capacity;
    rb->count--;
    return 0;
}

size_t rb_count(const ringbuf *rb)
{
    return rb->count;
}
