//! Profile reading.
