// SPDX-License-Identifier: GPL-2.0
//! [`Fifo`]: a bounded FIFO over fixed storage, the work and completion queue of a kernel
//! consumer (kernel verbs share no ring with user space).

/// A bounded FIFO over fixed storage (`S` is the slots: an array, or a kernel `KVVec`
/// allocated once): where a kernel consumer's work requests and completions wait. Kernel
/// verbs have no shared ring; the slots hold validated values, not bytes.
pub struct Fifo<T: Copy, S: core::ops::DerefMut<Target = [T]>> {
    slots: S,
    head: usize,
    len: usize,
}

impl<T: Copy, S: core::ops::DerefMut<Target = [T]>> Fifo<T, S> {
    /// An empty FIFO holding at most `slots.len()` values.
    pub fn new(slots: S) -> Self {
        Fifo {
            slots,
            head: 0,
            len: 0,
        }
    }

    /// Capacity.
    pub fn capacity(&self) -> usize {
        self.slots.len()
    }

    /// Values queued.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when nothing is queued.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// True when no value fits.
    pub fn is_full(&self) -> bool {
        self.len == self.slots.len()
    }

    /// Appends `v`; gives it back when full.
    pub fn push(&mut self, v: T) -> Result<(), T> {
        let cap = self.slots.len();
        if self.len == cap {
            return Err(v);
        }
        // `head` and `len` are below `cap`, so one wrap is enough. (No `%`: a remainder by
        // a length the compiler cannot prove non-zero calls core's rem-by-zero panic, which
        // 6.12's objtool does not know to be noreturn.)
        let mut at = self.head + self.len;
        if at >= cap {
            at -= cap;
        }
        match self.slots.get_mut(at) {
            Some(slot) => {
                *slot = v;
                self.len += 1;
                Ok(())
            }
            None => Err(v),
        }
    }

    /// The oldest value, left in place.
    pub fn peek(&self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        self.slots.get(self.head).copied()
    }

    /// Takes the oldest value.
    pub fn pop(&mut self) -> Option<T> {
        if self.len == 0 {
            return None;
        }
        let v = *self.slots.get(self.head)?;
        self.head += 1;
        if self.head == self.slots.len() {
            self.head = 0;
        }
        self.len -= 1;
        Some(v)
    }

    /// Moves every queued value, oldest first, into `other` (which must have room: values
    /// that do not fit stay here). Returns how many moved.
    pub fn drain_into<S2: core::ops::DerefMut<Target = [T]>>(
        &mut self,
        other: &mut Fifo<T, S2>,
    ) -> usize {
        let mut n = 0;
        while !other.is_full() {
            match self.pop() {
                Some(v) => {
                    let _ = other.push(v);
                    n += 1;
                }
                None => break,
            }
        }
        n
    }
}
