//! Convergence of `SET col = expr`: does repeating the assignment keep moving the column, or
//! does it settle? (Net change: [design: rules](../../../../docs/design.md#2-rules).)

use std::ops::ControlFlow;

use sqlparser::ast::{
    BinaryOperator, Expr, Function, FunctionArg, FunctionArgExpr, FunctionArguments, UnaryOperator,
    Value,
};

use super::functions;
use super::names::last_part;

fn function_args(f: &Function) -> Vec<&Expr> {
    match &f.args {
        FunctionArguments::List(list) => list
            .args
            .iter()
            .filter_map(|a| match a {
                FunctionArg::Named {
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::ExprNamed {
                    arg: FunctionArgExpr::Expr(e),
                    ..
                }
                | FunctionArg::Unnamed(FunctionArgExpr::Expr(e)) => Some(e),
                _ => None,
            })
            .collect(),
        _ => vec![],
    }
}

fn is_now_literal(e: &Expr) -> bool {
    matches!(e, Expr::Value(v) if matches!(&v.value,
        Value::SingleQuotedString(s) | Value::DoubleQuotedString(s) if s.eq_ignore_ascii_case("now")))
}

/// Whether `expr` reads the clock or a random source anywhere inside.
fn has_non_deterministic(expr: &Expr) -> bool {
    let found = sqlparser::ast::visit_expressions(expr, |e| {
        if let Expr::Function(f) = e {
            let name = last_part(&f.name);
            let args = function_args(f);
            if functions::is_non_deterministic(&name)
                || (functions::is_clock_when_now(&name)
                    && (args.is_empty() || args.iter().any(|a| is_now_literal(a))))
            {
                return ControlFlow::Break(());
            }
        }
        ControlFlow::Continue(())
    });
    found.is_break()
}

/// Whether `SET col = expr` moves `col` away from itself in a way that cannot converge on
/// repeat: arithmetic or concatenation on the column, date arithmetic on it, negation, or a
/// non-deterministic function anywhere ([design: rules](../../../../docs/design.md#2-rules)).
pub(crate) fn is_non_convergent(col: &str, expr: &Expr, table_aliases: &[String]) -> bool {
    has_non_deterministic(expr) || grows(col, expr, table_aliases, false)
}

fn is_self(col: &str, expr: &Expr, aliases: &[String]) -> bool {
    match expr {
        Expr::Identifier(i) => i.value.eq_ignore_ascii_case(col),
        Expr::CompoundIdentifier(parts) => {
            let (Some(last), qualifier) = (parts.last(), parts.get(parts.len().wrapping_sub(2)))
            else {
                return false;
            };
            if !last.value.eq_ignore_ascii_case(col) {
                return false;
            }
            match qualifier {
                // `EXCLUDED.x` is the proposed row, not the stored one.
                Some(q) if q.value.eq_ignore_ascii_case("excluded") => false,
                Some(q) => {
                    aliases.is_empty() || aliases.iter().any(|a| a.eq_ignore_ascii_case(&q.value))
                }
                None => true,
            }
        }
        _ => false,
    }
}

fn grows(col: &str, expr: &Expr, aliases: &[String], moving: bool) -> bool {
    match expr {
        Expr::Identifier(_) | Expr::CompoundIdentifier(_) => moving && is_self(col, expr, aliases),
        Expr::BinaryOp { left, op, right } => {
            let arith = matches!(
                op,
                BinaryOperator::Plus
                    | BinaryOperator::Minus
                    | BinaryOperator::Multiply
                    | BinaryOperator::Divide
                    | BinaryOperator::Modulo
                    | BinaryOperator::StringConcat
                    | BinaryOperator::BitwiseXor
                    | BinaryOperator::PGBitwiseXor
            );
            let m = moving || arith;
            grows(col, left, aliases, m) || grows(col, right, aliases, m)
        }
        Expr::UnaryOp { op, expr } => {
            let flips = matches!(op, UnaryOperator::Minus | UnaryOperator::Not);
            grows(col, expr, aliases, moving || flips)
        }
        Expr::Nested(e) | Expr::Cast { expr: e, .. } => grows(col, e, aliases, moving),
        Expr::Case {
            operand,
            conditions,
            else_result,
            ..
        } => {
            let _ = operand;
            conditions
                .iter()
                .any(|c| grows(col, &c.result, aliases, moving))
                || else_result
                    .as_ref()
                    .is_some_and(|e| grows(col, e, aliases, moving))
        }
        Expr::Function(f) => {
            let name = last_part(&f.name);
            let args = function_args(f);
            if functions::is_date_arithmetic(&name)
                && args.len() > 1
                && args.iter().any(|a| refers_to(col, a, aliases))
            {
                return true;
            }
            if functions::is_converging(&name) {
                args.iter().any(|a| grows(col, a, aliases, moving))
            } else {
                // Unknown functions: presumed convergent unless something around them moves.
                args.iter().any(|a| grows(col, a, aliases, moving))
            }
        }
        _ => false,
    }
}

fn refers_to(col: &str, expr: &Expr, aliases: &[String]) -> bool {
    sqlparser::ast::visit_expressions(expr, |e| {
        if is_self(col, e, aliases) {
            ControlFlow::Break(())
        } else {
            ControlFlow::Continue(())
        }
    })
    .is_break()
}
