//! fio's `continue_on_error` and `ignore_error` onto the block job's errors it goes on after
//! (crate::on_error): read as given, mapped once the job's options are all read.

use super::{bad, need, Loc, Out, Problem, Said};
use crate::fio::ini::Opt;
use crate::on_error::{ContinueOn, IgnoreError};

#[derive(Default)]
pub(super) struct OnErrorRaw {
    on: Option<(ContinueOn, Loc)>,
    ignore: Option<(IgnoreError, String, Loc)>,
}

/// One of the two options (`Ok(false)`: neither).
pub(super) fn read(r: &mut OnErrorRaw, o: &Opt) -> Result<bool, Problem> {
    let at = o.at.clone();
    match o.key.as_str() {
        "continue_on_error" => r.on = Some((need(o)?.parse().map_err(|e| bad(o, e))?, at)),
        "ignore_error" => {
            let v = need(o)?;
            r.ignore = Some((v.parse().map_err(|e| bad(o, e))?, v.to_string(), at));
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// fio goes on after an error only where continue_on_error names its direction, and then
/// after the errnos of that direction's ignore_error list (EIO and EILSEQ without one).
pub(super) fn finish(r: &OnErrorRaw, o: &mut Out, said: &mut Said) {
    let on = r.on.as_ref().filter(|(on, _)| *on != ContinueOn::None);
    match (on, &r.ignore) {
        (Some((on, at)), ignore) => {
            o.set("continue_on_error", at);
            o.p.continue_on_error = Some(*on);
            if matches!(on, ContinueOn::Verify | ContinueOn::All) {
                said.note(at, format!("continue_on_error={on}: iolab's validation counts bad blocks and goes on until max_errors (verify_fatal=1 stops at the first) whatever this says"));
            }
            if let Some((i, _, at)) = ignore {
                o.set("ignore_error", at);
                o.p.ignore_error = Some(i.clone());
            }
        }
        (None, Some((i, text, at))) if i.read.is_some() || i.write.is_some() || i.verify.is_some() => said.note(
            at,
            format!(
                "ignore_error={text}: without continue_on_error fio goes on after no error, and neither does iolab"
            ),
        ),
        _ => {}
    }
}
