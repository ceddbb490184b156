//! The raw layer's two macros: [`symbol_table!`] declares a driver's symbol table with each symbol
//! named once, and [`call!`] calls one of its functions with its status named by the symbol.

/// Declares a driver's symbol table: a struct with one `pub` function pointer per symbol, each typed by
/// the `devsim-sys` declaration of the same name (`$sys::fns::<symbol>`), and `resolve`, which looks up
/// each symbol by its own name. A symbol is written once, here; the fields, the types and the names
/// looked up all come from that one word.
macro_rules! symbol_table {
    (
        $(#[$meta:meta])*
        $vis:vis struct $table:ident in $sys:ident { $($symbol:ident),* $(,)? }
    ) => {
        $(#[$meta])*
        #[allow(non_snake_case, missing_docs)]
        $vis struct $table {
            $(pub $symbol: $sys::fns::$symbol,)*
        }

        impl $table {
            /// Resolves every symbol in `lib` by its own name; `candidate` names the library in a
            /// missing-symbol error.
            ///
            /// # Safety
            ///
            /// Each `fns` type must be its symbol's C signature (`devsim-sys` transcribes them from the
            /// vendor headers), and `lib` must stay loaded while the pointers are used.
            unsafe fn resolve(
                lib: &libloading::Library,
                candidate: &str,
            ) -> Result<Self, $crate::runtime::live::library::LibraryError> {
                Ok(Self {
                    $(
                        // SAFETY: the caller guarantees the type and that the library stays loaded.
                        $symbol: unsafe {
                            $crate::runtime::live::library::resolve(lib, candidate, stringify!($symbol))
                        }?,
                    )*
                })
            }
        }
    };
}

/// Calls `$symbol` of `$driver`'s symbol table and wraps its status code in a
/// [`DriverStatus`](super::status::DriverStatus) named by the symbol, ready for `.result()`:
/// `unsafe { call!(self, cuDeviceGetCount(&mut count)) }.result()?`.
///
/// The call is unsafe: use it inside an `unsafe` block whose `SAFETY` comment covers the C contract.
macro_rules! call {
    ($driver:expr, $symbol:ident($($arg:expr),* $(,)?)) => {
        $crate::runtime::live::status::DriverStatus::new(
            $driver,
            stringify!($symbol),
            ($driver.api().$symbol)($($arg),*),
        )
    };
}

pub(crate) use {call, symbol_table};
