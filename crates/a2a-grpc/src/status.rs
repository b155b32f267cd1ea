//! A gRPC status from an agent, read as the A2A error it stands for. The
//! SDKs say it three ways: a1.x service puts `google.rpc.ErrorInfo` (its
//! `reason`, domain `a2a-protocol.org`) in `grpc-status-details-bin`;
//! 0.3 services write `ClassName: message` as the status message; every
//! one sets a code, but not the same code for the same error (a task not
//! cancelable is FAILED_PRECONDITION from 1.x, UNIMPLEMENTED from
//! a2a-sdk 0.3). Read in that order, the first that says something wins.

use prost::Message as _;
use tonic::Code;

/// The A2A errors a gateway call can meet, with their JSON-RPC codes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum A2aError {
    TaskNotFound,
    TaskNotCancelable,
    PushNotificationNotSupported,
    UnsupportedOperation,
    ContentTypeNotSupported,
    InvalidAgentResponse,
    ExtendedCardNotConfigured,
    ExtensionSupportRequired,
    VersionNotSupported,
    InvalidParams,
    InvalidRequest,
    MethodNotFound,
    Internal,
    /// Not an A2A error: the transport's (unavailable, deadline, ...).
    Transport,
}

impl A2aError {
    /// The JSON-RPC error code A2A gives it (-32603 for the transport's:
    /// an internal error as far as a JSON-RPC client can tell).
    pub fn json_rpc_code(self) -> i64 {
        match self {
            A2aError::TaskNotFound => -32001,
            A2aError::TaskNotCancelable => -32002,
            A2aError::PushNotificationNotSupported => -32003,
            A2aError::UnsupportedOperation => -32004,
            A2aError::ContentTypeNotSupported => -32005,
            A2aError::InvalidAgentResponse => -32006,
            A2aError::ExtendedCardNotConfigured => -32007,
            A2aError::ExtensionSupportRequired => -32008,
            A2aError::VersionNotSupported => -32009,
            A2aError::InvalidParams => -32602,
            A2aError::InvalidRequest => -32600,
            A2aError::MethodNotFound => -32601,
            A2aError::Internal | A2aError::Transport => -32603,
        }
    }

    fn from_reason(reason: &str) -> Option<A2aError> {
        Some(match reason {
            "TASK_NOT_FOUND" => A2aError::TaskNotFound,
            "TASK_NOT_CANCELABLE" => A2aError::TaskNotCancelable,
            "PUSH_NOTIFICATION_NOT_SUPPORTED" => A2aError::PushNotificationNotSupported,
            "UNSUPPORTED_OPERATION" => A2aError::UnsupportedOperation,
            "CONTENT_TYPE_NOT_SUPPORTED" => A2aError::ContentTypeNotSupported,
            "INVALID_AGENT_RESPONSE" => A2aError::InvalidAgentResponse,
            "EXTENDED_AGENT_CARD_NOT_CONFIGURED" => A2aError::ExtendedCardNotConfigured,
            "EXTENSION_SUPPORT_REQUIRED" => A2aError::ExtensionSupportRequired,
            "VERSION_NOT_SUPPORTED" => A2aError::VersionNotSupported,
            "INVALID_PARAMS" => A2aError::InvalidParams,
            "INVALID_REQUEST" => A2aError::InvalidRequest,
            "METHOD_NOT_FOUND" => A2aError::MethodNotFound,
            "INTERNAL_ERROR" => A2aError::Internal,
            _ => return None,
        })
    }

    fn from_class(class: &str) -> Option<A2aError> {
        Some(match class {
            "TaskNotFoundError" => A2aError::TaskNotFound,
            "TaskNotCancelableError" => A2aError::TaskNotCancelable,
            "PushNotificationNotSupportedError" => A2aError::PushNotificationNotSupported,
            "UnsupportedOperationError" => A2aError::UnsupportedOperation,
            "ContentTypeNotSupportedError" => A2aError::ContentTypeNotSupported,
            "InvalidAgentResponseError" => A2aError::InvalidAgentResponse,
            "AuthenticatedExtendedCardNotConfiguredError"
            | "ExtendedAgentCardNotConfiguredError" => A2aError::ExtendedCardNotConfigured,
            "InvalidParamsError" => A2aError::InvalidParams,
            "InvalidRequestError" | "JSONParseError" => A2aError::InvalidRequest,
            "MethodNotFoundError" => A2aError::MethodNotFound,
            "InternalError" => A2aError::Internal,
            _ => return None,
        })
    }

    fn from_code(code: Code) -> A2aError {
        match code {
            Code::NotFound => A2aError::TaskNotFound,
            Code::InvalidArgument => A2aError::InvalidParams,
            Code::Unimplemented | Code::FailedPrecondition => A2aError::UnsupportedOperation,
            Code::Internal | Code::Unknown | Code::DataLoss => A2aError::Internal,
            _ => A2aError::Transport,
        }
    }
}

/// `google.rpc.Status`, as far as its details go.
#[derive(Clone, PartialEq, prost::Message)]
struct RpcStatus {
    #[prost(message, repeated, tag = "3")]
    details: Vec<prost_types::Any>,
}

/// `google.rpc.ErrorInfo`'s reason.
#[derive(Clone, PartialEq, prost::Message)]
struct ErrorInfo {
    #[prost(string, tag = "1")]
    reason: String,
    #[prost(string, tag = "2")]
    domain: String,
}

const ERROR_INFO_TYPE: &str = "type.googleapis.com/google.rpc.ErrorInfo";

/// What a status says, and the message to show (without a class prefix).
pub fn classify(status: &tonic::Status) -> (A2aError, String) {
    let message = status.message();
    let (class, text) = match message.split_once(": ") {
        Some((class, text)) if class.ends_with("Error") && !class.contains(' ') => {
            (Some(class), text)
        }
        _ => (None, message),
    };
    let from_details = RpcStatus::decode(status.details())
        .ok()
        .and_then(|rpc| {
            rpc.details
                .iter()
                .filter(|any| any.type_url == ERROR_INFO_TYPE)
                .find_map(|any| ErrorInfo::decode(any.value.as_slice()).ok())
        })
        .and_then(|info| A2aError::from_reason(&info.reason));
    let error = from_details
        .or_else(|| class.and_then(A2aError::from_class))
        .unwrap_or_else(|| A2aError::from_code(status.code()));
    (error, text.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_reason(code: Code, message: &str, reason: &str) -> tonic::Status {
        let info = ErrorInfo {
            reason: reason.to_owned(),
            domain: "a2a-protocol.org".to_owned(),
        };
        let details = RpcStatus {
            details: vec![prost_types::Any {
                type_url: ERROR_INFO_TYPE.to_owned(),
                value: info.encode_to_vec(),
            }],
        };
        tonic::Status::with_details(code, message, details.encode_to_vec().into())
    }

    #[test]
    fn each_sdks_way_of_saying_it_is_read() {
        // a2a-sdk 1.3.0's 1.0 service: the reason.
        let status = with_reason(
            Code::FailedPrecondition,
            "Task cannot be canceled",
            "TASK_NOT_CANCELABLE",
        );
        assert_eq!(
            classify(&status),
            (
                A2aError::TaskNotCancelable,
                "Task cannot be canceled".to_owned()
            )
        );
        // a2a-sdk 0.3.26: the class in the message, under another code.
        let status = tonic::Status::new(
            Code::Unimplemented,
            "TaskNotCancelableError: Task cannot be canceled",
        );
        assert_eq!(classify(&status).0, A2aError::TaskNotCancelable);
        assert_eq!(classify(&status).1, "Task cannot be canceled");
        // Only a code.
        let status = tonic::Status::new(Code::NotFound, "no such task");
        assert_eq!(classify(&status).0, A2aError::TaskNotFound);
        let status = tonic::Status::new(Code::Unavailable, "connection refused");
        assert_eq!(classify(&status).0, A2aError::Transport);
        // A message that merely has a colon is no class.
        let status = tonic::Status::new(Code::Internal, "the model said: no");
        assert_eq!(
            classify(&status),
            (A2aError::Internal, "the model said: no".to_owned())
        );
        // Details that do not decode are no reason.
        let status = tonic::Status::with_details(Code::NotFound, "x", vec![0xff, 0xff].into());
        assert_eq!(classify(&status).0, A2aError::TaskNotFound);
    }
}
