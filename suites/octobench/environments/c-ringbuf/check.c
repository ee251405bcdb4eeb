#include <assert.h>
#include <stdio.h>
#include "ringbuf.h"

int main(void)
{
    int storage[4] = {0, 0, 0, 0};
    ringbuf rb;
    int v;

    rb_init(&rb, storage, 3);
    assert(rb_push(&rb, 1) == 0);
    assert(rb_push(&rb, 2) == 0);
    assert(rb_push(&rb, 3) == 0);
    assert(rb_push(&rb, 4) == -1);
    assert(rb_pop(&rb, &v) == 0 && v == 1);
    assert(rb_push(&rb, 4) == 0); /* wraps around to storage[0] */
    assert(storage[3] != 4 && storage[0] == 4);
    assert(rb_pop(&rb, &v) == 0 && v == 2);
    assert(rb_pop(&rb, &v) == 0 && v == 3);
    assert(rb_pop(&rb, &v) == 0 && v == 4);
    assert(rb_pop(&rb, &v) == -1);
    assert(rb_count(&rb) == 0);
    puts("ringbuf: all checks passed");
    return 0;
}
